# The plugin's two tables: the payment requests it made, and the webhook messages it acted on.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('pretixbase', '0311_fix_unshredded_invoices'),
    ]

    operations = [
        migrations.CreateModel(
            name='OrchardWebhookMessage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False)),
                ('message_id', models.CharField(max_length=190, unique=True)),
                ('event_type', models.CharField(max_length=100)),
                ('payment_request_id', models.CharField(default='', max_length=190)),
                ('received', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.CreateModel(
            name='OrchardPaymentRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False)),
                ('payment_request_id', models.CharField(max_length=190, unique=True)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('last_checked', models.DateTimeField(blank=True, null=True)),
                ('capture_due', models.BooleanField(default=False)),
                ('event', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='pretixbase.event')),
                ('payment', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='orchard_requests', to='pretixbase.orderpayment')),
            ],
        ),
    ]
