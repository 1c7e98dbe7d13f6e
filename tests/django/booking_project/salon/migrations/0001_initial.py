from django.db import migrations, models


class Migration(migrations.Migration):  # type: ignore[misc]
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [
        migrations.CreateModel(
            name="Service",
            fields=[("id", models.BigAutoField(primary_key=True)), ("name", models.CharField(max_length=100))],
        ),
        migrations.CreateModel(
            name="Customer",
            fields=[
                ("id", models.BigAutoField(primary_key=True)),
                ("name", models.CharField(max_length=100)),
                ("email", models.EmailField(max_length=254)),
                ("phone", models.CharField(blank=True, max_length=30)),
            ],
        ),
        migrations.CreateModel(
            name="Appointment",
            fields=[
                ("id", models.BigAutoField(primary_key=True)),
                ("starts_at", models.DateTimeField()),
                ("cancelled", models.BooleanField(default=False)),
                ("customer", models.ForeignKey(on_delete=models.deletion.CASCADE, to="salon.customer")),
                ("service", models.ForeignKey(on_delete=models.deletion.PROTECT, to="salon.service")),
            ],
        ),
    ]
