# Where the periodic task stopped reading each Orchard key's event feed (GET /v1/events).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pretix_orchard', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='OrchardEventCursor',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False)),
                ('key', models.CharField(max_length=64, unique=True)),
                ('cursor', models.CharField(blank=True, default='', max_length=190)),
                ('updated', models.DateTimeField(auto_now=True)),
            ],
        ),
    ]
